"""A bare Vulkan instance and device for an OpenXR session's graphics binding (XR_KHR_vulkan_enable), via ctypes.

A session that is not headless needs a graphics binding; this source draws nothing, so the
binding needs no more than a device with a graphics queue. The Vulkan loader (libvulkan.so.1,
vulkan-1.dll) is called directly through ctypes: no Python Vulkan package is needed. Extensions
the runtime asks for and the driver lacks are left out (Mesa's CPU driver, lavapipe, has no
VK_KHR_external_semaphore_fd or VK_KHR_external_fence_fd; a session runs without them).
"""
from __future__ import annotations

import ctypes
import sys
from ctypes import POINTER, Structure, byref, c_char, c_char_p, c_float, c_uint32, c_void_p

from ..errors import DeviceUnavailable

VK_SUCCESS, VK_INCOMPLETE = 0, 5
QUEUE_GRAPHICS_BIT = 0x1
APPLICATION_INFO, INSTANCE_CREATE_INFO, DEVICE_QUEUE_CREATE_INFO, DEVICE_CREATE_INFO = 0, 1, 2, 3


class VulkanUnavailable(DeviceUnavailable):
    """No Vulkan loader or no usable device; the message says which."""


class ApplicationInfo(Structure):
    _fields_ = [("sType", c_uint32), ("pNext", c_void_p), ("pApplicationName", c_char_p),
                ("applicationVersion", c_uint32), ("pEngineName", c_char_p), ("engineVersion", c_uint32),
                ("apiVersion", c_uint32)]


class InstanceCreateInfo(Structure):
    _fields_ = [("sType", c_uint32), ("pNext", c_void_p), ("flags", c_uint32),
                ("pApplicationInfo", POINTER(ApplicationInfo)), ("enabledLayerCount", c_uint32),
                ("ppEnabledLayerNames", POINTER(c_char_p)), ("enabledExtensionCount", c_uint32),
                ("ppEnabledExtensionNames", POINTER(c_char_p))]


class DeviceQueueCreateInfo(Structure):
    _fields_ = [("sType", c_uint32), ("pNext", c_void_p), ("flags", c_uint32), ("queueFamilyIndex", c_uint32),
                ("queueCount", c_uint32), ("pQueuePriorities", POINTER(c_float))]


class DeviceCreateInfo(Structure):
    _fields_ = [("sType", c_uint32), ("pNext", c_void_p), ("flags", c_uint32), ("queueCreateInfoCount", c_uint32),
                ("pQueueCreateInfos", POINTER(DeviceQueueCreateInfo)), ("enabledLayerCount", c_uint32),
                ("ppEnabledLayerNames", POINTER(c_char_p)), ("enabledExtensionCount", c_uint32),
                ("ppEnabledExtensionNames", POINTER(c_char_p)), ("pEnabledFeatures", c_void_p)]


class QueueFamilyProperties(Structure):
    _fields_ = [("queueFlags", c_uint32), ("queueCount", c_uint32), ("timestampValidBits", c_uint32),
                ("minImageTransferGranularity", c_uint32 * 3)]


class ExtensionProperties(Structure):
    _fields_ = [("extensionName", c_char * 256), ("specVersion", c_uint32)]


def api_version(major: int, minor: int) -> int:
    """VK_MAKE_API_VERSION(0, major, minor, 0)."""
    return (major << 22) | (minor << 12)


def load_vulkan():
    """The Vulkan loader as a ctypes library, or VulkanUnavailable."""
    name = "vulkan-1.dll" if sys.platform == "win32" else "libvulkan.so.1"
    try:
        library = ctypes.CDLL(name)
    except OSError as error:
        raise VulkanUnavailable(f"no Vulkan loader ({name}: {error})") from None
    library.vkCreateInstance.argtypes = [POINTER(InstanceCreateInfo), c_void_p, POINTER(c_void_p)]
    library.vkDestroyInstance.argtypes = [c_void_p, c_void_p]
    library.vkEnumerateInstanceExtensionProperties.argtypes = [c_char_p, POINTER(c_uint32),
                                                                 POINTER(ExtensionProperties)]
    library.vkEnumerateDeviceExtensionProperties.argtypes = [c_void_p, c_char_p, POINTER(c_uint32),
                                                               POINTER(ExtensionProperties)]
    library.vkGetPhysicalDeviceQueueFamilyProperties.argtypes = [c_void_p, POINTER(c_uint32),
                                                                   POINTER(QueueFamilyProperties)]
    library.vkGetPhysicalDeviceQueueFamilyProperties.restype = None
    library.vkCreateDevice.argtypes = [c_void_p, POINTER(DeviceCreateInfo), c_void_p, POINTER(c_void_p)]
    library.vkDestroyDevice.argtypes = [c_void_p, c_void_p]
    library.vkDestroyInstance.restype = library.vkDestroyDevice.restype = None
    return library


def _names(names: list[str]):
    array = (c_char_p * max(len(names), 1))(*[n.encode() for n in names])
    return len(names), array


def _extensions(enumerate_call, *handle) -> set[str]:
    count = c_uint32(0)
    _check(enumerate_call(*handle, None, byref(count), None), "listing Vulkan extensions")
    properties = (ExtensionProperties * count.value)()
    _check(enumerate_call(*handle, None, byref(count), properties), "listing Vulkan extensions")
    return {p.extensionName.decode() for p in properties[:count.value]}


def _check(result: int, what: str) -> None:
    if result not in (VK_SUCCESS, VK_INCOMPLETE):
        raise VulkanUnavailable(f"{what} failed (VkResult {result})")


class VulkanDevice:
    """A Vulkan instance and a device with one graphics queue; `instance`, `physical_device`, `device`,
    `queue_family` are the raw handles and index an XrGraphicsBindingVulkanKHR takes. `skipped` names
    the extensions the runtime asked for that the driver lacks."""

    def __init__(self, instance_extensions: list[str], pick_physical_device, device_extensions: list[str],
                 version: tuple[int, int] = (1, 1)):
        self.vk = load_vulkan()
        self.instance = self.device = None
        self.skipped: list[str] = []
        try:
            self._create(instance_extensions, pick_physical_device, device_extensions, version)
        except BaseException:
            self.destroy()
            raise

    def _create(self, instance_extensions, pick_physical_device, device_extensions, version) -> None:
        vk = self.vk
        offered = _extensions(vk.vkEnumerateInstanceExtensionProperties)
        wanted = [e for e in instance_extensions if e in offered]
        self.skipped = [e for e in instance_extensions if e not in offered]
        application = ApplicationInfo(APPLICATION_INFO, None, b"VR Avatar", 1, b"vr-avatar core", 1,
                                      api_version(*version))
        count, names = _names(wanted)
        info = InstanceCreateInfo(INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(application), 0, None, count, names)
        instance = c_void_p()
        _check(vk.vkCreateInstance(byref(info), None, byref(instance)), "creating the Vulkan instance")
        self.instance = instance.value
        self.physical_device = pick_physical_device(self.instance)
        if not self.physical_device:
            raise VulkanUnavailable("the OpenXR runtime named no Vulkan device")
        self.queue_family = self._graphics_queue_family()
        offered = _extensions(vk.vkEnumerateDeviceExtensionProperties, c_void_p(self.physical_device))
        wanted = [e for e in device_extensions if e in offered]
        self.skipped += [e for e in device_extensions if e not in offered]
        priority = c_float(1.0)
        queue = DeviceQueueCreateInfo(DEVICE_QUEUE_CREATE_INFO, None, 0, self.queue_family, 1, ctypes.pointer(priority))
        count, names = _names(wanted)
        info = DeviceCreateInfo(DEVICE_CREATE_INFO, None, 0, 1, ctypes.pointer(queue), 0, None, count, names, None)
        device = c_void_p()
        _check(vk.vkCreateDevice(c_void_p(self.physical_device), byref(info), None, byref(device)),
               "creating the Vulkan device")
        self.device = device.value

    def _graphics_queue_family(self) -> int:
        count = c_uint32(0)
        self.vk.vkGetPhysicalDeviceQueueFamilyProperties(c_void_p(self.physical_device), byref(count), None)
        families = (QueueFamilyProperties * count.value)()
        self.vk.vkGetPhysicalDeviceQueueFamilyProperties(c_void_p(self.physical_device), byref(count), families)
        for index, family in enumerate(families[:count.value]):
            if family.queueFlags & QUEUE_GRAPHICS_BIT:
                return index
        raise VulkanUnavailable("the Vulkan device the OpenXR runtime named has no graphics queue")

    def destroy(self) -> None:
        """Destroy the device and the instance (after the OpenXR session that used them)."""
        if self.device:
            self.vk.vkDestroyDevice(c_void_p(self.device), None)
            self.device = None
        if self.instance:
            self.vk.vkDestroyInstance(c_void_p(self.instance), None)
            self.instance = None
